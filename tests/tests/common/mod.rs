//! What the record tests share: parsing the hosted benchmarks' records back and checking the
//! fields every record has (`docs/bench-protocol.md`).

use serde_json::Value;

/// Parses `text` (the records of `tests::bench::to_json_array`) as a JSON array of records,
/// checks that each record stands alone on its line and is an object with the common fields
/// and their types, and returns the records.
pub fn parse_records(text: &str) -> Vec<Value> {
    let parsed: Vec<Value> = serde_json::from_str(text).expect("a JSON array");
    for line in text.lines().filter(|l| l.starts_with('{')) {
        serde_json::from_str::<Value>(line.trim_end_matches(',')).expect("one record per line");
    }
    for r in &parsed {
        let o = r.as_object().expect("record is an object");
        for k in ["bench", "variant", "lock", "unit", "counter"] {
            assert!(o[k].is_string(), "{k} in {r}");
        }
        for k in ["cores", "clients", "counter_hz", "overhead"] {
            assert!(o[k].is_u64(), "{k} in {r}");
        }
    }
    parsed
}
