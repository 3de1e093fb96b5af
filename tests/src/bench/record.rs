//! Raw benchmark records ([`Record`]) and their JSON form, as `docs/bench-protocol.md` defines
//! them. No serialisation crate: the format is small and fixed, and writing it by hand keeps the
//! harness free of dependencies.

use std::fmt::Write as _;

/// A JSON value of a record's `extra` object.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// A string.
    Str(String),
    /// An integer.
    Int(i64),
    /// A number (non-finite values are written as `null`).
    Num(f64),
    /// A boolean.
    Bool(bool),
    /// An object, keys in order.
    Obj(Vec<(String, Json)>),
}

impl From<&str> for Json {
    fn from(s: &str) -> Self {
        Json::Str(s.to_owned())
    }
}

impl From<String> for Json {
    fn from(s: String) -> Self {
        Json::Str(s)
    }
}

impl From<u64> for Json {
    fn from(x: u64) -> Self {
        Json::Int(i64::try_from(x).unwrap_or(i64::MAX))
    }
}

impl From<usize> for Json {
    fn from(x: usize) -> Self {
        Json::from(x as u64)
    }
}

impl From<f64> for Json {
    fn from(x: f64) -> Self {
        Json::Num(x)
    }
}

impl From<bool> for Json {
    fn from(b: bool) -> Self {
        Json::Bool(b)
    }
}

impl Json {
    /// Appends the JSON text of `self` to `out`.
    pub fn write(&self, out: &mut String) {
        match self {
            Json::Str(s) => write_str(out, s),
            Json::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Json::Num(x) => write_num(out, *x),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Obj(fields) => {
                out.push('{');
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_str(out, k);
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// Writes `s` as a JSON string literal (quotes, backslashes and control characters escaped).
pub fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Writes a number: integers without a fraction, others with three decimals; `null` if not
/// finite (JSON has no NaN or infinity).
pub fn write_num(out: &mut String, x: f64) {
    if !x.is_finite() {
        out.push_str("null");
    } else if x == x.trunc() && x.abs() < 1e15 {
        let _ = write!(out, "{}", x as i64);
    } else {
        let _ = write!(out, "{x:.3}");
    }
}

/// One raw record (see `docs/bench-protocol.md`, "Raw records").
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// Benchmark name (`ipc-roundtrip`, `ipc-call`, ...).
    pub bench: String,
    /// `same-as` / `cross-as`, `pairs`, `shared` / `dedicated`, or empty.
    pub variant: String,
    /// The kernel's lock: `none`, `clh`, `ticket`, `fine`, `rtm`.
    pub lock: String,
    /// Cores taking part.
    pub cores: usize,
    /// Client threads (client-server), else 0.
    pub clients: usize,
    /// Pages per task (the memory records; for `memory-ipc` the tasks' that ran before the
    /// Calls), else 0 (then not written, so that the other records are unchanged).
    pub pages: u32,
    /// `cycles`, `round trips/s`, ...
    pub unit: String,
    /// The counter read (`tsc` on the host).
    pub counter: String,
    /// The counter's frequency (0: unknown).
    pub counter_hz: u64,
    /// Cost of reading the counter, in `unit`, already subtracted from `samples`.
    pub overhead: u64,
    /// Throughput benches: one sampling interval in counter ticks (`None`: not written).
    pub interval_ticks: Option<u64>,
    /// One number per repetition after warm-up.
    pub samples: Vec<f64>,
    /// Bench-specific details (`None`: not written).
    pub extra: Option<Vec<(String, Json)>>,
}

impl Record {
    /// A record with no samples, no interval and no extra.
    pub fn new(bench: &str, variant: &str, lock: &str, unit: &str) -> Self {
        Self {
            bench: bench.into(),
            variant: variant.into(),
            lock: lock.into(),
            cores: 1,
            clients: 0,
            pages: 0,
            unit: unit.into(),
            counter: "tsc".into(),
            counter_hz: 0,
            overhead: 0,
            interval_ticks: None,
            samples: Vec::new(),
            extra: None,
        }
    }

    /// Adds an `extra` field.
    pub fn extra(&mut self, key: &str, value: impl Into<Json>) -> &mut Self {
        self.extra
            .get_or_insert_with(Vec::new)
            .push((key.to_owned(), value.into()));
        self
    }

    /// The record as one line of JSON, fields in the protocol's order.
    pub fn to_json(&self) -> String {
        let mut o = String::with_capacity(256 + 16 * self.samples.len());
        o.push('{');
        let field = |o: &mut String, k: &str| {
            if o.len() > 1 {
                o.push(',');
            }
            write_str(o, k);
            o.push(':');
        };
        field(&mut o, "bench");
        write_str(&mut o, &self.bench);
        field(&mut o, "variant");
        write_str(&mut o, &self.variant);
        field(&mut o, "lock");
        write_str(&mut o, &self.lock);
        field(&mut o, "cores");
        let _ = write!(o, "{}", self.cores);
        field(&mut o, "clients");
        let _ = write!(o, "{}", self.clients);
        if self.pages != 0 {
            field(&mut o, "pages");
            let _ = write!(o, "{}", self.pages);
        }
        field(&mut o, "unit");
        write_str(&mut o, &self.unit);
        field(&mut o, "counter");
        write_str(&mut o, &self.counter);
        field(&mut o, "counter_hz");
        let _ = write!(o, "{}", self.counter_hz);
        field(&mut o, "overhead");
        let _ = write!(o, "{}", self.overhead);
        if let Some(t) = self.interval_ticks {
            field(&mut o, "interval_ticks");
            let _ = write!(o, "{t}");
        }
        field(&mut o, "samples");
        o.push('[');
        for (i, &x) in self.samples.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            write_num(&mut o, x);
        }
        o.push(']');
        if let Some(extra) = &self.extra {
            field(&mut o, "extra");
            Json::Obj(extra.clone()).write(&mut o);
        }
        o.push('}');
        o
    }
}

/// A JSON array of records, one per line.
pub fn to_json_array(records: &[Record]) -> String {
    let mut o = String::from("[\n");
    for (i, r) in records.iter().enumerate() {
        o.push_str(&r.to_json());
        if i + 1 < records.len() {
            o.push(',');
        }
        o.push('\n');
    }
    o.push_str("]\n");
    o
}

/// (min, median, mean, population standard deviation) of `xs` (zeros if empty).
pub fn stats(xs: &[f64]) -> (f64, f64, f64, f64) {
    if xs.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64;
    (v[0], v[v.len() / 2], mean, var.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_strings() {
        let mut o = String::new();
        write_str(&mut o, "a\"b\\c\nd\u{1}é");
        assert_eq!(o, r#""a\"b\\c\nd\u0001é""#);
    }

    #[test]
    fn numbers() {
        let mut o = String::new();
        for x in [3.0, 2.5, -1.0, f64::NAN, 1e20] {
            write_num(&mut o, x);
            o.push(' ');
        }
        assert_eq!(
            o, "3 2.500 -1 null 100000000000000000000.000 ",
            "integers plain, others with 3 decimals, NaN null"
        );
    }

    #[test]
    fn record_line() {
        let mut r = Record::new("ipc-call", "cross-as", "clh", "cycles");
        r.counter_hz = 2_400_000_000;
        r.overhead = 20;
        r.samples = vec![100.0, 101.25];
        r.extra("rtm", false).extra("n", 3u64);
        assert_eq!(
            r.to_json(),
            r#"{"bench":"ipc-call","variant":"cross-as","lock":"clh","cores":1,"clients":0,"unit":"cycles","counter":"tsc","counter_hz":2400000000,"overhead":20,"samples":[100,101.250],"extra":{"rtm":false,"n":3}}"#
        );
        let mut t = Record::new("client-server", "shared", "fine", "round trips/s");
        t.interval_ticks = Some(1000);
        assert!(t
            .to_json()
            .contains(r#""overhead":0,"interval_ticks":1000,"samples":[]}"#));
        assert_eq!(to_json_array(&[]), "[\n]\n");
        let mut m = Record::new("memory-alloc", "percore", "clh", "cycles");
        m.cores = 2;
        m.clients = 2;
        m.pages = 100;
        assert!(m
            .to_json()
            .contains(r#""cores":2,"clients":2,"pages":100,"unit":"cycles""#));
    }
}
