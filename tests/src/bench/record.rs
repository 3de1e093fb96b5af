//! Raw benchmark records ([`Record`]) as the hosted benchmarks build them, written in the
//! protocol's JSON form (`protocol::record::RawRecord`, `docs/bench-protocol.md`), the same
//! form the guests print.

use protocol::record::RawRecord;

/// A JSON value of a record's `extra` object.
pub type Json = serde_json::Value;

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

    /// The record in the protocol's form.
    pub fn raw(&self) -> RawRecord {
        RawRecord {
            bench: self.bench.clone(),
            variant: self.variant.clone(),
            lock: self.lock.clone(),
            cores: u32::try_from(self.cores).unwrap_or(u32::MAX),
            clients: u32::try_from(self.clients).unwrap_or(u32::MAX),
            pages: self.pages,
            unit: self.unit.clone(),
            counter: self.counter.clone(),
            counter_hz: self.counter_hz as f64,
            overhead: self.overhead as f64,
            interval_ticks: self.interval_ticks.map(|t| t as f64),
            samples: self.samples.clone(),
            extra: self
                .extra
                .as_ref()
                .map(|fields| Json::Object(fields.iter().cloned().collect())),
        }
    }

    /// The record as one line of JSON, fields in the protocol's order.
    pub fn to_json(&self) -> String {
        self.raw().to_json()
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
    fn record_line() {
        let mut r = Record::new("ipc-call", "cross-as", "clh", "cycles");
        r.counter_hz = 2_400_000_000;
        r.overhead = 20;
        r.samples = vec![100.0, 101.25];
        r.extra("rtm", false).extra("n", 3u64);
        assert_eq!(
            r.to_json(),
            r#"{"bench":"ipc-call","variant":"cross-as","lock":"clh","cores":1,"clients":0,"unit":"cycles","counter":"tsc","counter_hz":2400000000,"overhead":20,"samples":[100,101.25],"extra":{"n":3,"rtm":false}}"#
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
