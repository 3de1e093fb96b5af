//! The simulator on hand-made traces whose answer is known by hand.

use sim::config::{Bucket, CacheModel, Config, LockLatency, LockStrategy};
use sim::simulate::{recorded_throughput, simulate, sweep, SimError};
use sim::trace::{ObjectLock, Record, Strategy, Trace};

const HZ: u64 = 1_000_000_000;

/// A record: `pre` cycles before the lock request, `wait` to acquire, `held` in the lock, `post`
/// after it.
fn rec(core: u16, entry: u64, pre: u32, wait: u32, held: u32, post: u32) -> Record {
    Record {
        entry,
        lock_requested: pre,
        lock_acquired: pre + wait,
        lock_released: pre + wait + held,
        exit: pre + wait + held + post,
        core,
        thread: u32::from(core),
        number: 1,
        in_kernel: 1,
        ..Record::EMPTY
    }
}

/// `rec` with object locks `(id, acquired, wait)`.
fn with_objects(mut r: Record, objects: &[(u32, u32, u32)]) -> Record {
    for (slot, &(id, acquired, wait)) in r.objects.iter_mut().zip(objects) {
        *slot = ObjectLock { id, acquired, wait };
    }
    r.object_count = objects.len() as u8;
    r.validate().unwrap();
    r
}

fn trace(cores: u16, records: Vec<Record>) -> Trace {
    let t = Trace {
        cores,
        strategy: Strategy::BigLock,
        frequency_hz: HZ,
        records,
    };
    // Everything the tests use goes through the binary format once.
    Trace::from_bytes(&t.to_bytes()).unwrap()
}

fn cfg(k: usize, strategy: LockStrategy, entry: u64, exit: u64) -> Config {
    Config {
        lock_latency: LockLatency::Fixed { entry, exit },
        ..Config::new(k, strategy)
    }
}

/// One core, entries every 1000 cycles: replaying it on one core gives its run time and
/// throughput, with or without mode-switch cost and lock latencies.
#[test]
fn one_core_reproduces_the_trace() {
    let t = trace(
        1,
        (0..100)
            .map(|i| rec(0, 5_000 + i * 1000, 50, 12, 200, 40))
            .collect(),
    );
    let recorded = t.end() - t.start();
    for (entry, exit) in [(12, 0), (12, 30)] {
        let r = simulate(&t, &cfg(1, LockStrategy::BigLock, entry, exit)).unwrap();
        assert_eq!(r.run_cycles, recorded, "entry {entry} exit {exit}");
        assert_eq!(r.entries, 100);
        assert_eq!(r.lock_wait_cycles, 0);
        assert_eq!(r.throughput_per_s, recorded_throughput(&t));
    }
    // An extra mode-switch cost is paid twice per entry.
    let c = Config {
        mode_switch_cost: 7,
        ..cfg(1, LockStrategy::BigLock, 12, 30)
    };
    assert_eq!(simulate(&t, &c).unwrap().run_cycles, recorded + 100 * 2 * 7);
    // No lock drops the recorded entry latency (12 cycles) from each of the 100 entries; user
    // time between entries is kept, so the savings add up (a closed loop, as in the thesis).
    let r = simulate(&t, &cfg(1, LockStrategy::NoLock, 0, 0)).unwrap();
    assert_eq!(r.run_cycles, recorded - 100 * 12);
}

/// Two cores whose kernel entries interleave without ever overlapping: no waiting, and the
/// recorded run time.
#[test]
fn two_cores_never_overlapping_never_wait() {
    let mut records = Vec::new();
    for i in 0..50 {
        records.push(rec(0, i * 2000, 20, 10, 300, 30));
        records.push(rec(1, i * 2000 + 1000, 20, 10, 300, 30));
    }
    let t = trace(2, records);
    let r = simulate(&t, &cfg(2, LockStrategy::BigLock, 10, 0)).unwrap();
    assert_eq!(r.lock_wait_cycles, 0);
    assert_eq!(r.run_cycles, t.end() - t.start());
    assert_eq!(r.per_core[0].entries, 50);
    assert_eq!(r.per_core[1].entries, 50);
}

/// Two cores that are in the kernel all the time, always in the lock: under the big lock the
/// critical sections add up; with no lock the cores run side by side.
fn colliding(n: u64, held: u32) -> Trace {
    let mut records = Vec::new();
    for i in 0..n {
        for core in 0..2 {
            records.push(rec(core, i * u64::from(held), 0, 0, held, 0));
        }
    }
    trace(2, records)
}

#[test]
fn two_cores_always_colliding_serialise() {
    let (n, h) = (40, 100);
    let t = colliding(n, h);
    let r = simulate(&t, &cfg(2, LockStrategy::BigLock, 0, 0)).unwrap();
    assert_eq!(r.run_cycles, 2 * n * u64::from(h));
    // Core 1 waits 100 cycles for every entry; core 0 from its second entry on.
    assert_eq!(r.per_core[1].lock_wait_cycles, n * 100);
    assert_eq!(r.per_core[0].lock_wait_cycles, (n - 1) * 100);
    let free = simulate(&t, &cfg(2, LockStrategy::NoLock, 0, 0)).unwrap();
    assert_eq!(free.run_cycles, n * u64::from(h));
    assert_eq!(free.lock_wait_cycles, 0);
    // Fine-grained with no objects in the trace takes no lock at all.
    let fine = simulate(&t, &cfg(2, LockStrategy::FineGrained, 0, 0)).unwrap();
    assert_eq!(fine.run_cycles, free.run_cycles);
}

/// Fine-grained: core 0 takes A (at 10) then B (at 20) and holds both until 50; core 1's lock
/// chain decides the answer, worked out by hand in each case.
#[test]
fn chain_of_fine_grained_locks() {
    let core0 = with_objects(rec(0, 0, 0, 0, 50, 10), &[(0xA, 10, 0), (0xB, 20, 0)]);
    let case = |objects: &[(u32, u32, u32)]| {
        let t = trace(
            2,
            vec![core0, with_objects(rec(1, 0, 0, 0, 50, 10), objects)],
        );
        simulate(&t, &cfg(2, LockStrategy::FineGrained, 0, 0)).unwrap()
    };
    // The same chain: core 1 waits for A from 10 to 50, then runs its 50 cycles.
    let r = case(&[(0xA, 10, 0), (0xB, 20, 0)]);
    assert_eq!((r.run_cycles, r.lock_wait_cycles), (100, 40));
    assert_eq!(r.per_core[0].finish_cycles, 60);
    // Only B: core 1 queues behind core 0 for B at 20 and gets it at 50.
    let r = case(&[(0xB, 20, 0)]);
    assert_eq!((r.run_cycles, r.lock_wait_cycles), (90, 30));
    // Disjoint objects: no waiting, both finish at 60.
    let r = case(&[(0xC, 10, 0), (0xD, 20, 0)]);
    assert_eq!((r.run_cycles, r.lock_wait_cycles), (60, 0));
    // The big lock serialises the two entries whatever their objects: core 1 waits from 0 to
    // 50, then holds the lock until 100 and leaves the kernel at 110.
    let t = trace(
        2,
        vec![
            core0,
            with_objects(rec(1, 0, 0, 0, 50, 10), &[(0xC, 10, 0)]),
        ],
    );
    let r = simulate(&t, &cfg(2, LockStrategy::BigLock, 0, 0)).unwrap();
    assert_eq!((r.run_cycles, r.lock_wait_cycles), (110, 50));
}

/// Replicated rows: an object only one recorded core locked is copied per replaying core (no
/// waiting between replicas), an object two recorded cores locked stays one lock.
#[test]
fn private_objects_are_copied_per_replica_shared_ones_are_not() {
    // One recorded core, object A held from 10 to the end at 60: on 2 simulated cores each
    // replica has its own A, so both finish at 60.
    let t = trace(
        1,
        vec![with_objects(rec(0, 0, 0, 0, 50, 10), &[(0xA, 10, 0)])],
    );
    let r = simulate(&t, &cfg(2, LockStrategy::FineGrained, 0, 0)).unwrap();
    assert_eq!((r.run_cycles, r.lock_wait_cycles), (60, 0));
    // Two recorded cores both lock A (shared): on 4 simulated cores, four entries queue for the
    // one A; each holds it 40 cycles after its request at 10, so they end at 60, 100, 140, 180.
    let t = trace(
        2,
        vec![
            with_objects(rec(0, 0, 0, 0, 50, 10), &[(0xA, 10, 0)]),
            with_objects(rec(1, 0, 0, 0, 50, 10), &[(0xA, 10, 0)]),
        ],
    );
    let r = simulate(&t, &cfg(4, LockStrategy::FineGrained, 0, 0)).unwrap();
    assert_eq!(r.run_cycles, 180);
    assert_eq!(r.lock_wait_cycles, 40 + 80 + 120);
}

/// Recorded object waits are taken out of the work and recomputed.
#[test]
fn recorded_object_waits_are_resimulated() {
    // Core 0 waited 25 cycles for A at run time; alone on the core it does not wait at all.
    let r0 = with_objects(rec(0, 0, 0, 0, 75, 0), &[(0xA, 35, 25)]);
    let t = trace(1, vec![r0]);
    let r = simulate(&t, &cfg(1, LockStrategy::FineGrained, 0, 0)).unwrap();
    assert_eq!(r.run_cycles, 50);
    let r = simulate(&t, &cfg(1, LockStrategy::BigLock, 0, 0)).unwrap();
    assert_eq!(r.run_cycles, 50);
}

/// A synthetic 4-core trace with varied durations whose lock sections never overlap (each core
/// has its own slot in a round): replay on 4 cores reproduces the run time and each core's end
/// exactly, with lock entry and exit latencies.
#[test]
fn replay_on_recorded_cores_is_exact() {
    let mut x = 12345u64;
    let mut rand = |m: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    let mut records = Vec::new();
    for round in 0..200u64 {
        for core in 0..4u16 {
            let slot = round * 4000 + u64::from(core) * 1000;
            let pre = 20 + rand(50) as u32;
            let held = 100 + rand(500) as u32;
            let post = 40 + rand(100) as u32;
            // The entry is placed so the lock section sits inside the core's slot.
            records.push(rec(core, slot + 200 + rand(100), pre, 15, held, post));
        }
    }
    let t = trace(4, records);
    let c = cfg(4, LockStrategy::BigLock, 15, 25);
    let r = simulate(&t, &c).unwrap();
    assert_eq!(r.lock_wait_cycles, 0);
    assert_eq!(r.run_cycles, t.end() - t.start());
    for (core, res) in r.per_core.iter().enumerate() {
        let last = t.core_records(core as u16).last().unwrap().exit_at();
        assert_eq!(res.finish_cycles, last - t.start());
    }
    // On 8 simulated cores, cores s and s + 4 replay the same rows at the same times: they
    // collide, so the big lock makes them wait and the run gets longer.
    let r8 = simulate(
        &t,
        &Config {
            simulated_cores: 8,
            ..c
        },
    )
    .unwrap();
    assert_eq!(r8.entries, 1600);
    assert!(r8.lock_wait_cycles > 0);
    assert!(r8.run_cycles > r.run_cycles);
}

/// A cache model whose lock costs one line transfer to move, waited for or not, and with no
/// kernel-entry lines.
fn cache(line_transfer: u64, per_sharer: u64, per_waiter: u64, data_lines: u64) -> CacheModel {
    CacheModel {
        enabled: true,
        line_transfer,
        per_sharer,
        per_waiter,
        data_lines,
        lock_handoff: line_transfer,
        lock_cold: line_transfer,
        entry_lines: 0.0,
        pre_lock_lines: 0.0,
    }
}

/// A cache model with only the kernel-entry cost: `lines` lines of `transfer` cycles each.
fn entry_only(lines: f64, transfer: u64) -> CacheModel {
    CacheModel {
        enabled: true,
        line_transfer: transfer,
        entry_lines: lines,
        ..CacheModel::default()
    }
}

#[test]
fn cache_model_slows_contended_runs_only() {
    let (n, h) = (40u64, 100u32);
    let t = colliding(n, h);
    let off = simulate(&t, &cfg(2, LockStrategy::BigLock, 0, 0)).unwrap();
    let on = Config {
        cache: cache(10, 0, 0, 0),
        ..cfg(2, LockStrategy::BigLock, 0, 0)
    };
    let r = simulate(&t, &on).unwrap();
    // Every acquisition after the first moves the lock line to the other core: 10 cycles each.
    assert_eq!(r.cache_cycles, (2 * n - 1) * 10);
    assert_eq!(r.run_cycles, off.run_cycles + (2 * n - 1) * 10);
    // The cost grows with data lines, sharers and waiters.
    let richer = Config {
        cache: cache(10, 5, 7, 3),
        ..on.clone()
    };
    let r2 = simulate(&t, &richer).unwrap();
    assert!(r2.run_cycles > r.run_cycles);
    let c4 = |k| {
        simulate(
            &t,
            &Config {
                simulated_cores: k,
                ..richer.clone()
            },
        )
        .unwrap()
    };
    let per_handoff = |r: &sim::simulate::SimResult| r.cache_cycles as f64 / r.entries as f64;
    assert!(per_handoff(&c4(4)) > per_handoff(&c4(2)));

    // Uncontended: one core, disjoint fine-grained objects, and no lock are unchanged.
    let one = trace(
        1,
        (0..50).map(|i| rec(0, i * 1000, 10, 0, 200, 10)).collect(),
    );
    let fine = trace(
        2,
        (0..50)
            .flat_map(|i| {
                [0u16, 1]
                    .map(|c| with_objects(rec(c, i * 300, 0, 0, 200, 10), &[(u32::from(c), 5, 0)]))
            })
            .collect(),
    );
    for (t, k, strategy) in [
        (&one, 1, LockStrategy::BigLock),
        (&fine, 2, LockStrategy::FineGrained),
        (&t, 2, LockStrategy::NoLock),
    ] {
        let mut plain = simulate(t, &cfg(k, strategy, 5, 5)).unwrap();
        plain.cache_model = true;
        let cached = simulate(
            t,
            &Config {
                cache: cache(100, 50, 50, 8),
                ..cfg(k, strategy, 5, 5)
            },
        )
        .unwrap();
        assert_eq!(cached, plain, "{strategy:?}");
    }
}

#[test]
fn deterministic_output() {
    let mut records = Vec::new();
    for i in 0..100u64 {
        for core in 0..3u16 {
            let id = (i as u32 + u32::from(core)) % 4;
            records.push(with_objects(
                rec(core, i * 700 + u64::from(core) * 13, 10, 0, 300, 20),
                &[(id, 20, 0), (id + 10, 100, 0)],
            ));
        }
    }
    let t = trace(3, records);
    let base = Config {
        lock_latency: LockLatency::Distribution {
            entry: 20,
            exit: vec![
                Bucket {
                    cycles: 80,
                    weight: 8,
                },
                Bucket {
                    cycles: 600,
                    weight: 2,
                },
            ],
            seed: 42,
        },
        mode_switch_cost: 30,
        cache: cache(50, 10, 10, 2),
        ..Config::new(1, LockStrategy::BigLock)
    };
    let run = |base: &Config| {
        sweep(&t, base, [1, 2, 3, 5, 8, 16], &LockStrategy::ALL)
            .unwrap()
            .to_json()
    };
    let first = run(&base);
    assert_eq!(first, run(&base));
    // The seed is used: another seed draws other exit latencies.
    let mut other = base.clone();
    if let LockLatency::Distribution { seed, .. } = &mut other.lock_latency {
        *seed = 43;
    }
    assert_ne!(first, run(&other));
}

/// The 1..64 sweep: one point per strategy and core count; with no lock, a one-core trace scales
/// exactly linearly; under the big lock throughput cannot pass one critical section at a time.
#[test]
fn sweep_1_to_64() {
    let held = 250u32;
    let t = trace(
        1,
        (0..60).map(|i| rec(0, i * 2000, 50, 0, held, 50)).collect(),
    );
    let s = sweep(
        &t,
        &cfg(1, LockStrategy::BigLock, 0, 0),
        1..=64,
        &LockStrategy::ALL,
    )
    .unwrap();
    assert_eq!(s.points.len(), 3 * 64);
    let at = |strategy, k| {
        s.points
            .iter()
            .find(|p| p.strategy == strategy && p.simulated_cores == k)
            .unwrap()
            .throughput_per_s
    };
    let one = at(LockStrategy::NoLock, 1);
    assert!((at(LockStrategy::NoLock, 64) / one - 64.0).abs() < 1e-9);
    let lock_bound = HZ as f64 / f64::from(held);
    assert!(at(LockStrategy::BigLock, 64) <= lock_bound);
    assert!(at(LockStrategy::BigLock, 64) > at(LockStrategy::BigLock, 1));
    assert!(at(LockStrategy::BigLock, 64) < 0.5 * at(LockStrategy::NoLock, 64));
    let json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    assert_eq!(json["points"][0]["strategy"], "big_lock");
    assert_eq!(json["recorded_cores"], 1);
}

/// Two entries that took the same two objects in opposite orders (a kernel that releases
/// between phases can): held to the end in the recorded orders they would deadlock at 20; the
/// replay takes them in id order, so core 1 asks for object 1 at 10, gets it when core 0
/// releases both at 50, and finishes its remaining 40 cycles at 90.
#[test]
fn opposite_recorded_orders_replay_in_id_order_without_deadlock() {
    let t = trace(
        2,
        vec![
            with_objects(rec(0, 0, 0, 0, 50, 0), &[(1, 10, 0), (2, 20, 0)]),
            with_objects(rec(1, 0, 0, 0, 50, 0), &[(2, 10, 0), (1, 20, 0)]),
        ],
    );
    let r = simulate(&t, &cfg(2, LockStrategy::FineGrained, 0, 0)).expect("no deadlock");
    assert_eq!((r.run_cycles, r.lock_wait_cycles), (90, 40));
    assert_eq!(r.per_core[0].finish_cycles, 50);
    assert_eq!(
        simulate(&trace(1, vec![]), &cfg(1, LockStrategy::NoLock, 0, 0)),
        Err(SimError::EmptyTrace)
    );
}

/// The kernel-entry cost under no lock: two cores entering in lock step, 100 cycles in the
/// kernel every 1000. Core 0's first entry finds no other core's lines; every later entry of
/// either core finds the other core's: it pays `entry_lines × line_transfer`, and the delay
/// carries over to its later entries (the recorded user time after each exit is kept).
#[test]
fn entry_lines_charge_every_entry_after_another_cores() {
    let n = 30u64;
    let records = (0..n)
        .flat_map(|i| [0u16, 1].map(|c| rec(c, i * 1000, 0, 0, 100, 0)))
        .collect();
    let t = trace(2, records);
    let off = simulate(&t, &cfg(2, LockStrategy::NoLock, 0, 0)).unwrap();
    assert_eq!(off.run_cycles, (n - 1) * 1000 + 100);
    let on = simulate(
        &t,
        &Config {
            cache: entry_only(3.0, 40),
            ..cfg(2, LockStrategy::NoLock, 0, 0)
        },
    )
    .unwrap();
    assert_eq!(on.per_core[0].cache_cycles, (n - 1) * 120);
    assert_eq!(on.per_core[1].cache_cycles, n * 120);
    assert_eq!(on.cache_cycles, (2 * n - 1) * 120);
    assert_eq!(on.run_cycles, off.run_cycles + n * 120);
    assert_eq!(on.lock_wait_cycles, 0);

    // One core alone never pays: the 1-core replay is unchanged.
    let one = trace(1, (0..n).map(|i| rec(0, i * 1000, 0, 0, 100, 0)).collect());
    for strategy in [LockStrategy::NoLock, LockStrategy::BigLock] {
        let plain = simulate(&one, &cfg(1, strategy, 5, 0)).unwrap();
        let cached = simulate(
            &one,
            &Config {
                cache: CacheModel {
                    lock_cold: 50,
                    lock_handoff: 50,
                    ..entry_only(3.0, 40)
                },
                ..cfg(1, strategy, 5, 0)
            },
        )
        .unwrap();
        assert_eq!(cached.cache_cycles, 0, "{strategy:?}");
        assert_eq!(cached.run_cycles, plain.run_cycles, "{strategy:?}");
    }
}

/// Predicting two cores from a one-core trace: both simulated cores replay the same rows, so
/// the prediction without the model is twice the recorded throughput, and with it every entry
/// but the very first pays the entry cost (known by hand).
#[test]
fn entry_lines_in_a_prediction_from_one_core() {
    let n = 50u64;
    let one = trace(1, (0..n).map(|i| rec(0, i * 500, 0, 0, 200, 0)).collect());
    let recorded = recorded_throughput(&one);
    let off = simulate(&one, &cfg(2, LockStrategy::NoLock, 0, 0)).unwrap();
    assert!((off.throughput_per_s / recorded - 2.0).abs() < 1e-9);
    let on = simulate(
        &one,
        &Config {
            cache: entry_only(2.0, 25),
            ..cfg(2, LockStrategy::NoLock, 0, 0)
        },
    )
    .unwrap();
    assert_eq!(on.cache_cycles, (2 * n - 1) * 50);
    assert_eq!(on.run_cycles, off.run_cycles + n * 50);
    let expected = (2 * n) as f64 * HZ as f64 / (off.run_cycles + n * 50) as f64;
    assert!((on.throughput_per_s - expected).abs() < 1e-6);
}

/// The lock's own hand-off costs: a lock taken after waiting for the other core's release pays
/// `lock_handoff`, a free lock another core held last pays `lock_cold`, and a lock the core
/// held last pays nothing.
#[test]
fn lock_handoff_and_cold_costs() {
    let (n, h) = (20u64, 100u32);
    // Always colliding: every acquisition after the first waited for the other core.
    let t = colliding(n, h);
    let model = CacheModel {
        enabled: true,
        lock_handoff: 30,
        lock_cold: 7,
        ..CacheModel::default()
    };
    let r = simulate(
        &t,
        &Config {
            cache: model,
            ..cfg(2, LockStrategy::BigLock, 0, 0)
        },
    )
    .unwrap();
    assert_eq!(r.cache_cycles, (2 * n - 1) * 30);
    assert_eq!(r.run_cycles, 2 * n * u64::from(h) + (2 * n - 1) * 30);

    // Never overlapping: the lock is always free, and always last held by the other core.
    let mut records = Vec::new();
    for i in 0..n {
        records.push(rec(0, i * 2000, 20, 0, 300, 30));
        records.push(rec(1, i * 2000 + 1000, 20, 0, 300, 30));
    }
    let apart = trace(2, records);
    let r = simulate(
        &apart,
        &Config {
            cache: model,
            ..cfg(2, LockStrategy::BigLock, 0, 0)
        },
    )
    .unwrap();
    assert_eq!(r.lock_wait_cycles, 0);
    assert_eq!(r.cache_cycles, (2 * n - 1) * 7);

    // One core taking the lock again and again: never a hand-off.
    let one = trace(1, (0..n).map(|i| rec(0, i * 1000, 0, 0, 100, 0)).collect());
    let r = simulate(
        &one,
        &Config {
            cache: model,
            ..cfg(1, LockStrategy::BigLock, 0, 0)
        },
    )
    .unwrap();
    assert_eq!(r.cache_cycles, 0);
}

/// Where the entry cost falls matters under the big lock: two cores always in the lock (held
/// 100 cycles, no time outside it). Lines moved in the critical section lengthen every
/// section after the first; lines moved before the lock request are paid while the other
/// core holds the lock, and cost no time at all.
#[test]
fn pre_lock_lines_overlap_the_other_cores_section() {
    let (n, h) = (25u64, 100u32);
    let t = colliding(n, h);
    let run = |cache| {
        simulate(
            &t,
            &Config {
                cache,
                ..cfg(2, LockStrategy::BigLock, 0, 0)
            },
        )
        .unwrap()
    };
    let inside = run(entry_only(1.5, 40));
    assert_eq!(inside.cache_cycles, (2 * n - 1) * 60);
    assert_eq!(inside.run_cycles, 2 * n * u64::from(h) + (2 * n - 1) * 60);
    let before = run(CacheModel {
        pre_lock_lines: 1.5,
        ..entry_only(0.0, 40)
    });
    assert_eq!(before.cache_cycles, (2 * n - 1) * 60);
    assert_eq!(before.run_cycles, 2 * n * u64::from(h));
    // Under no lock both are the same cost on the same path.
    let free = |cache| {
        simulate(
            &t,
            &Config {
                cache,
                ..cfg(2, LockStrategy::NoLock, 0, 0)
            },
        )
        .unwrap()
        .run_cycles
    };
    assert_eq!(
        free(entry_only(1.5, 40)),
        free(CacheModel {
            pre_lock_lines: 1.5,
            ..entry_only(0.0, 40)
        })
    );
}

/// Without a lock the replay keeps the recorded entry into the section up to the configured
/// entry latency: a lock-free kernel's trace (its "wait" is the timestamp reads) replays to its
/// own run time when the latency is the recorded one, and a contended wait is not replayed.
#[test]
fn no_lock_replay_keeps_the_uncontended_entry() {
    let rows: Vec<Record> = (0..3).map(|i| rec(0, i * 1000, 5, 10, 50, 10)).collect();
    let t = trace(1, rows);
    let recorded = t.end() - t.start();
    let r = simulate(&t, &cfg(1, LockStrategy::NoLock, 10, 0)).unwrap();
    assert_eq!(r.run_cycles, recorded);
    // Each entry 6 cycles shorter; the recorded user time between entries is kept.
    let r = simulate(&t, &cfg(1, LockStrategy::NoLock, 4, 0)).unwrap();
    assert_eq!(r.run_cycles, recorded - 3 * 6);
    // A record that waited 500 cycles keeps only the 10 of an uncontended entry.
    let t = trace(1, vec![rec(0, 0, 5, 500, 50, 10)]);
    let r = simulate(&t, &cfg(1, LockStrategy::NoLock, 10, 0)).unwrap();
    assert_eq!(r.run_cycles, 75);
}
