//! The hosted memory benchmark (`tests::bench::memory`, `cargo bench -p tests --bench
//! memory_hosted`) on 1 and 2 cores, per-core and global pagers, a few strategies, tiny tasks:
//! every page a task touches takes exactly one fault, served by its pager (per-core pagers
//! never across cores, the global one across cores for every worker but core 0's), every
//! frame goes back to its allocator and every page-table frame to the pool, the kernel's
//! invariants hold, and the raw records are well-formed. Plus the same on 4 cores, more than
//! this machine may have (unpinned host threads). No timing is asserted.

mod common;

use tests::bench::memory::{run, Mode, Options, Report};
use tests::bench::{to_json_array, Lock};

const PAGES: usize = 8;
const RUNS: usize = 2;

fn quick(locks: &[Lock], cores: &[usize]) -> Report {
    let opts = Options {
        locks: locks.to_vec(),
        cores: cores.to_vec(),
        pages: vec![PAGES],
        modes: Mode::ALL.to_vec(),
        runs: RUNS,
        ..Options::new(true)
    };
    run(&opts, &mut |line| eprintln!("{line}"))
}

/// What every point must show.
fn check_outcomes(rep: &Report) {
    assert!(rep.problems.is_empty(), "{:#?}", rep.problems);
    for (lock, o) in &rep.outcomes {
        let w = o.workload;
        let what = format!("{} {} {} cores", w.mode.name(), lock.name(), w.cores);
        let per_worker = ((w.warmup + w.tasks) * w.pages) as u64;
        assert!(!o.aborted, "{what}");
        assert_eq!(o.faults_issued, vec![per_worker; w.cores], "{what}");
        assert_eq!(
            o.faults_served, o.faults_issued,
            "{what}: one fault served per page"
        );
        assert_eq!(
            o.faults_same_core + o.faults_cross_core,
            per_worker * w.cores as u64,
            "{what}"
        );
        match w.mode {
            Mode::PerCore => assert_eq!(o.faults_cross_core, 0, "{what}"),
            Mode::Global => {
                // Every worker but core 0's faults across cores.
                assert_eq!(
                    o.faults_cross_core,
                    per_worker * (w.cores as u64 - 1),
                    "{what}"
                );
                if w.cores > 1 {
                    assert!(o.faults_cross_core > 0, "{what}");
                }
            }
        }
        assert_eq!(o.pages_freed, per_worker * w.cores as u64, "{what}");
        assert_eq!((o.bad_pages, o.pager_errors), (0, 0), "{what}");
        // Conservation: every frame back in its allocator, nothing mapped, no table leaked.
        assert_eq!(o.pagers.len(), w.mode.pagers(w.cores), "{what}");
        for p in &o.pagers {
            assert_eq!((p.free, p.owned), (p.partition, p.partition), "{what}");
            assert_eq!(p.check, Ok(()), "{what}");
        }
        assert_eq!(
            o.pagers.iter().map(|p| p.partition).sum::<usize>(),
            w.partition() * w.cores,
            "{what}: the pagers own the whole pool"
        );
        assert_eq!(o.mapped_after, 0, "{what}");
        assert_eq!(o.tables.0, o.tables.1, "{what}: page-table frames");
        assert_eq!(o.invariants, Ok(()), "{what}");
        assert_eq!((o.alloc.len(), o.free.len()), (RUNS, RUNS), "{what}");
        let ipc = w.mode == Mode::PerCore && w.cores > 1;
        assert_eq!(o.ipc_same.len(), if ipc { RUNS } else { 0 }, "{what}");
        assert_eq!(o.ipc_cross.len(), o.ipc_same.len(), "{what}");
    }
}

#[test]
fn percore_and_global_pagers_serve_each_fault_once_and_conserve_frames() {
    let rep = quick(&[Lock::None, Lock::Clh, Lock::Fine], &[1, 2]);
    // 1 core: 2 modes x 3 locks; 2 cores: 2 modes x 2 locks (`none` runs on 1 core only).
    assert_eq!(rep.outcomes.len(), 6 + 4);
    assert!(rep
        .outcomes
        .iter()
        .all(|(l, o)| *l != Lock::None || o.workload.cores == 1));
    check_outcomes(&rep);

    // The records: alloc and free per point, memory-ipc for per-core pagers on 2 cores.
    let text = to_json_array(&rep.records);
    let parsed = common::parse_records(&text);
    assert_eq!(parsed.len(), 2 * 10 + 2 * 2, "{text}");
    for r in &parsed {
        let o = r.as_object().expect("record is an object");
        assert_eq!(o["unit"], "cycles", "{r}");
        assert_eq!(o["counter"], "tsc", "{r}");
        assert!(o["counter_hz"].as_u64().unwrap() > 0, "{r}");
        let cores = o["cores"].as_u64().unwrap();
        let lock = o["lock"].as_str().unwrap();
        assert!(["none", "clh", "fine"].contains(&lock), "{r}");
        assert!(lock != "none" || cores == 1, "{r}");
        let samples = o["samples"].as_array().expect("samples");
        assert_eq!(samples.len(), RUNS, "{r}");
        assert!(
            samples.iter().all(|s| s.as_f64().is_some_and(|x| x > 0.0)),
            "{r}"
        );
        let e = o["extra"].as_object().expect("extra");
        match o["bench"].as_str().unwrap() {
            "memory-alloc" | "memory-free" => {
                assert!(["percore", "global"].contains(&o["variant"].as_str().unwrap()));
                assert_eq!(o["clients"], cores, "{r}");
                assert_eq!(o["pages"], PAGES as u64, "{r}");
                assert_eq!(e["pages_per_task"], PAGES as u64, "{r}");
                let (same, cross) = (&e["faults_same_core"], &e["faults_cross_core"]);
                assert!(same.is_u64() && cross.is_u64(), "{r}");
                let pagers = if o["variant"] == "global" { 1 } else { cores };
                assert_eq!(e["pagers"], pagers, "{r}");
                if o["variant"] == "percore" {
                    assert_eq!(cross, 0, "{r}");
                } else if cores > 1 {
                    assert!(cross.as_u64().unwrap() > 0, "{r}");
                }
            }
            "memory-ipc" => {
                assert!(["same-core", "cross-core"].contains(&o["variant"].as_str().unwrap()));
                assert_eq!(cores, 2, "{r}");
                assert_eq!(o["pages"], PAGES as u64, "{r}");
                assert!(e["batch"].as_u64().unwrap() > 0, "{r}");
            }
            other => panic!("unexpected bench {other}"),
        }
    }
}

#[test]
fn oversubscribed_cores_still_serve_every_fault() {
    // 4 kernel cores: on a machine with fewer CPUs the host threads run unpinned and yield.
    let rep = quick(&[Lock::Ticket], &[4]);
    assert_eq!(rep.outcomes.len(), 2);
    check_outcomes(&rep);
}
