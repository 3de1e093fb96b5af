//! The tables of `docs/bench-protocol.md`, written from this crate's definitions.
//!
//! The document is prose with generated sections: each starts with
//! `<!-- generated from lib/protocol: NAME -->` and ends with `<!-- end of NAME -->`, and
//! [`section`] writes what belongs between the two. The crate's test `protocol_doc` checks the
//! document against them (`PROTOCOL_DOC_UPDATE=1 cargo test -p protocol --features std --test
//! protocol_doc` rewrites it), so the document says what the code does.

use core::fmt::{self, Write};

use crate::console::KINDS;
use crate::record::{Field, BENCHES, FIELDS};

/// The names of the generated sections, in document order.
pub const SECTIONS: &[&str] = &[
    "console-lines",
    "raw-record-fields",
    "benchmarks",
    "results-fields",
];

/// Writes a markdown table cell: `|` escaped.
fn cell(w: &mut impl Write, text: &str) -> fmt::Result {
    for c in text.chars() {
        if c == '|' {
            w.write_str("\\|")?;
        } else {
            w.write_char(c)?;
        }
    }
    Ok(())
}

fn fields(w: &mut impl Write, fields: &[Field]) -> fmt::Result {
    writeln!(w, "| field | type | meaning |")?;
    writeln!(w, "|---|---|---|")?;
    for f in fields {
        write!(w, "| `{}` | ", f.name)?;
        cell(w, f.ty)?;
        w.write_str(" | ")?;
        cell(w, f.meaning)?;
        writeln!(w, " |")?;
    }
    Ok(())
}

/// Writes the generated section `name` (one of [`SECTIONS`]); `false` for an unknown name.
pub fn section(w: &mut impl Write, name: &str) -> Result<bool, fmt::Error> {
    match name {
        "console-lines" => {
            writeln!(w, "| line | meaning | example |")?;
            writeln!(w, "|---|---|---|")?;
            for k in KINDS {
                w.write_str("| `")?;
                cell(w, k.syntax)?;
                w.write_str("` | ")?;
                cell(w, k.meaning)?;
                w.write_str(" | `")?;
                cell(w, k.example)?;
                writeln!(w, "` |")?;
            }
        }
        "raw-record-fields" => fields(w, FIELDS)?,
        "benchmarks" => {
            writeln!(w, "| `bench` | what one sample is |")?;
            writeln!(w, "|---|---|")?;
            for b in BENCHES {
                write!(w, "| `{}` | ", b.name)?;
                cell(w, b.sample)?;
                writeln!(w, " |")?;
            }
        }
        #[cfg(feature = "std")]
        "results-fields" => fields(w, crate::results::RESULTS_FIELDS)?,
        _ => return Ok(false),
    }
    Ok(true)
}
