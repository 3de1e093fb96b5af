//! The hosted benchmark's records are well-formed (`docs/bench-protocol.md`): a short run of
//! every bench through the same code as `cargo bench -p tests --bench ipc_hosted -- --quick`,
//! parsed back as JSON and checked field by field. No timing is asserted.

mod common;

use serde_json::Value;
use tests::bench::{run, to_json_array, Lock, Options};

#[test]
fn quick_run_writes_well_formed_records() {
    let opts = Options {
        locks: vec![Lock::None, Lock::Fine, Lock::Rtm],
        cores: vec![1, 2],
        clients: vec![1, 2],
        runs: 2,
        ..Options::new(true)
    };
    let recs = run(&opts, &mut |line| eprintln!("{line}"));
    let text = to_json_array(&recs);
    let parsed = common::parse_records(&text);
    // ipc: 3 benches x 2 variants x 3 locks; multicore: 2 core counts x 3 locks; client-server:
    // 2 variants x 2 client counts x 2 locks (`none` skipped); rtm-aborts.
    assert_eq!(parsed.len(), 18 + 6 + 8 + 1, "{text}");
    for r in &parsed {
        let o = r.as_object().expect("record is an object");
        let bench = o["bench"].as_str().unwrap();
        let samples = o["samples"].as_array().expect("samples");
        assert!(samples.iter().all(Value::is_number), "{r}");
        assert!(["none", "fine", "rtm"].contains(&o["lock"].as_str().unwrap()));
        match bench {
            "ipc-roundtrip" | "ipc-call" | "ipc-replyrecv" => {
                assert_eq!(o["unit"], "cycles");
                assert_eq!(samples.len(), 2);
                assert!(["same-as", "cross-as"].contains(&o["variant"].as_str().unwrap()));
                assert_eq!(o["cores"], 1);
                assert!(samples.iter().all(|s| s.as_f64().unwrap() > 0.0), "{r}");
                if bench != "ipc-roundtrip" {
                    assert!(o["overhead"].as_u64().unwrap() > 0, "{r}");
                }
            }
            "multicore-pingpong" | "client-server" => {
                assert_eq!(o["unit"], "round trips/s");
                assert_eq!(samples.len(), 2);
                assert!(o["interval_ticks"].as_u64().unwrap() > 0, "{r}");
                if bench == "client-server" {
                    assert!(["shared", "dedicated"].contains(&o["variant"].as_str().unwrap()));
                    assert!(o["clients"].as_u64().unwrap() >= 1);
                } else {
                    assert_eq!(o["variant"], "pairs");
                }
            }
            "rtm-aborts" => {
                let e = o["extra"].as_object().expect("extra");
                let n = |k: &str| e[k].as_u64().unwrap_or_else(|| panic!("{k} in {r}"));
                assert_eq!(
                    n("total"),
                    n("direct") + n("retry1") + n("retry2") + n("more") + n("fallback")
                );
                assert!(n("total") > 0);
                assert!(e["causes"].is_object());
            }
            other => panic!("unexpected bench {other}"),
        }
    }
}
