//! The `results.json` of every benchmark suite: one schema, whatever the suite measures.
//!
//! Every suite (`bench ipc` and `bench memory`, `bench locks` for the lock
//! micro-benchmarks, `bench redis` for the network benchmark) writes one object with the
//! keys of [`RESULTS_FIELDS`]: where and when the file was made, the machine, the resolved
//! selection (`plan`, whose `suite` names the suite), what went wrong, and `records`, one
//! object per measured point. The fields of a record are the suite's own (the IPC and memory
//! suites' are documented in `docs/bench-protocol.md`); `cargo xtask bench compare` matches
//! records of any suite by the same rule. [`Results`] reads and writes that object.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::record::Field;

/// The top-level keys of `results.json`, for the generated document.
pub const RESULTS_FIELDS: &[Field] = &[
    Field { name: "generated_by", ty: "object", meaning: "`command` (the command line), `unix_time`, `utc`, `seconds` (how long the run took), `revision` (the checkout's git revision, `-dirty` when tracked files differ)" },
    Field { name: "machine", ty: "object", meaning: "the host: `cpu`, `host_cores`, `qemu`, `rustc` (and what the suite adds, e.g. the guest's cores)" },
    Field { name: "plan", ty: "object", meaning: "the resolved selection; `suite` names the suite (`ipc`, `memory`, `host-locks`, `redis`), the rest is the suite's own (locks, platforms, cores, ...)" },
    Field { name: "method", ty: "object, optional", meaning: "how the suite measures, one sentence a key" },
    Field { name: "notes", ty: "array of strings", meaning: "what the reader should know about this run (a retry, a fallback)" },
    Field { name: "missing", ty: "array", meaning: "points the plan named that were not measured, with the reason" },
    Field { name: "errors", ty: "array", meaning: "what failed, one entry each" },
    Field { name: "records", ty: "array of objects", meaning: "one object per measured point, the suite's fields" },
    Field { name: "summary", ty: "array, optional", meaning: "comparisons the suite derives from its records (the lock micro-benchmarks' parity of each lock with the best peer of its kind)" },
];

/// Where and when a results file was made.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct GeneratedBy {
    /// The command line that made it.
    pub command: String,
    /// Seconds since the Unix epoch when it was written.
    pub unix_time: u64,
    /// The same time as `YYYY-MM-DD HH:MM UTC`.
    #[serde(default)]
    pub utc: String,
    /// How long the run took, in seconds.
    #[serde(default)]
    pub seconds: f64,
    /// The checkout's git revision (`-dirty` when tracked files differ, `nogit` without git).
    #[serde(default)]
    pub revision: String,
}

/// One `results.json`, its records of type `R` (any suite's: a typed record, or
/// [`serde_json::Value`] to read a file of any suite).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct Results<R> {
    /// Where and when it was made.
    pub generated_by: GeneratedBy,
    /// The host.
    pub machine: Value,
    /// The resolved selection; `plan.suite` names the suite.
    pub plan: Value,
    /// How the suite measures (absent where the records say it, as `method` of each).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub method: Value,
    /// What the reader should know.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Points not measured.
    #[serde(default)]
    pub missing: Vec<Value>,
    /// What failed.
    #[serde(default)]
    pub errors: Vec<Value>,
    /// One per measured point.
    pub records: Vec<R>,
    /// Comparisons derived from the records (absent where the suite derives none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summary: Vec<Value>,
}

/// Why a results file could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// Not JSON.
    NotJson(serde_json::Error),
    /// JSON without a `records` array.
    NoRecords,
    /// A record or a field that does not fit the schema.
    Schema(serde_json::Error),
}

impl core::fmt::Display for ReadError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ReadError::NotJson(e) => write!(f, "not JSON: {e}"),
            ReadError::NoRecords => f.write_str("no `records` array: not a results file"),
            ReadError::Schema(e) => write!(f, "does not fit the results schema: {e}"),
        }
    }
}

impl std::error::Error for ReadError {}

impl<R: serde::de::DeserializeOwned> Results<R> {
    /// Reads a results file's text.
    pub fn parse(text: &str) -> Result<Results<R>, ReadError> {
        let value: Value = serde_json::from_str(text).map_err(ReadError::NotJson)?;
        if !value.get("records").is_some_and(Value::is_array) {
            return Err(ReadError::NoRecords);
        }
        serde_json::from_value(value).map_err(ReadError::Schema)
    }
}

impl<R: Serialize> Results<R> {
    /// The file's text: pretty JSON with a final newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Results<Value> {
        Results {
            generated_by: GeneratedBy {
                command: "cargo xtask bench --quick".into(),
                unix_time: 1_764_000_000,
                utc: "2025-11-24 16:00 UTC".into(),
                seconds: 12.0,
                revision: "abc1234".into(),
            },
            machine: json!({"cpu": "x", "host_cores": 2, "qemu": "none", "rustc": "r"}),
            plan: json!({"suite": "ipc"}),
            method: Value::Null,
            notes: vec!["a note".into()],
            missing: vec![],
            errors: vec![],
            records: vec![json!({"bench": "ipc-call", "samples": [1, 2]})],
            summary: vec![],
        }
    }

    #[test]
    fn a_results_file_reads_back_as_written() {
        let r = sample();
        let back: Results<Value> = Results::parse(&r.to_json()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn the_written_keys_are_the_documented_ones() {
        let mut r = sample();
        r.method = json!({"ipc": "one sentence"});
        r.summary = vec![json!({"lock": "clh", "verdict": "met"})];
        let v = serde_json::to_value(&r).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), RESULTS_FIELDS.len());
        for f in RESULTS_FIELDS {
            assert!(v.get(f.name).is_some(), "{} not written", f.name);
        }
    }

    #[test]
    fn what_is_not_a_results_file_says_why() {
        assert!(matches!(
            Results::<Value>::parse("nope"),
            Err(ReadError::NotJson(_))
        ));
        assert!(matches!(
            Results::<Value>::parse(r#"{"rows": []}"#),
            Err(ReadError::NoRecords)
        ));
        assert!(matches!(
            Results::<Value>::parse(r#"{"records": [], "plan": {}}"#),
            Err(ReadError::Schema(_))
        ));
    }
}
