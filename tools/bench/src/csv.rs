//! `results.csv`: one row per record, RFC 4180 quoting, samples space-separated in one field.

use super::records::Record;

/// The CSV header.
pub const HEADER: [&str; 24] = [
    "bench",
    "variant",
    "arch",
    "platform",
    "board",
    "strategy",
    "lock",
    "cores",
    "clients",
    "pages",
    "runs",
    "unit",
    "mean",
    "stddev",
    "min",
    "median",
    "samples",
    "counter",
    "counter_hz",
    "method",
    "cpu",
    "host_cores",
    "qemu",
    "kernel_trace",
];

/// Quotes a field if it holds a comma, a quote or a line break.
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// The CSV text of `records`, header first, `\n` line ends.
pub fn write(records: &[Record]) -> String {
    let mut out = HEADER.join(",");
    out.push('\n');
    for r in records {
        let samples: Vec<String> = r.samples.iter().map(|s| s.to_string()).collect();
        let row = [
            r.bench.clone(),
            r.variant.clone(),
            r.arch.clone(),
            r.platform.clone(),
            r.board.clone(),
            r.strategy.clone(),
            r.lock.clone(),
            r.cores.to_string(),
            r.clients.to_string(),
            r.pages.to_string(),
            r.runs.to_string(),
            r.unit.clone(),
            r.mean.to_string(),
            r.stddev.to_string(),
            r.min.to_string(),
            r.median.to_string(),
            samples.join(" "),
            r.counter.clone(),
            r.counter_hz.to_string(),
            r.method.clone(),
            r.machine.cpu.clone(),
            r.machine.host_cores.to_string(),
            r.machine.qemu.clone(),
            r.kernel_trace.clone(),
        ];
        let cells: Vec<String> = row.iter().map(|c| field(c)).collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

/// Splits CSV text into rows of fields (quoted fields may hold commas, quotes and line breaks).
pub fn parse(text: &str) -> Result<Vec<Vec<String>>, String> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut cell = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => cell.push(c),
            (false, '"') if cell.is_empty() => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut cell)),
            (false, '\n') => {
                row.push(std::mem::take(&mut cell));
                rows.push(std::mem::take(&mut row));
            }
            (false, '\r') => {}
            (false, c) => cell.push(c),
        }
    }
    if quoted {
        return Err("unterminated quoted field".into());
    }
    if !cell.is_empty() || !row.is_empty() {
        row.push(cell);
        rows.push(row);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::record;
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a, b"), "\"a, b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn round_trip_through_the_parser() {
        let mut r = record(
            "ipc-roundtrip",
            "x86_64",
            "qemu-icount",
            "clh",
            1,
            &[421.0, 422.5],
        );
        r.method = "one, two; \"three\"".into();
        let text = write(&[r.clone(), r]);
        let rows = parse(&text).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0], HEADER.map(String::from).to_vec());
        for row in &rows[1..] {
            assert_eq!(row.len(), HEADER.len());
            assert_eq!(row[0], "ipc-roundtrip");
            assert_eq!(row[12], "421.75");
            assert_eq!(row[16], "421 422.5");
            assert_eq!(row[19], "one, two; \"three\"");
            assert_eq!(row[23], "off");
        }
        assert!(parse("\"open").is_err());
    }
}
