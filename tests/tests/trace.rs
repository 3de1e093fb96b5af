//! Kernel lock tracing in the hosted harness (the kernel's `trace` feature): a
//! multi-core IPC stress run with a tracer, then checks that the trace is the run. Every entry
//! is recorded once, on its core, in time order, with the lock timestamps in order and the
//! system-call numbers the programs made. The trace then goes through the `sim` crate's
//! file format, its analysis and its replay on the recorded core count.
#![cfg(feature = "trace")]

use std::time::Duration;

use kernel::trace::{EntryKind, Record, Tracer};
use kernel::{BigLock, Kernel};
use kernel_locks::ClhLock;
use sim::config::{Config, LockStrategy};
use sim::trace::{Strategy as TraceStrategy, Trace};
use tests::{run, workload, FakeHal, HostRelax, Programs, RunConfig};

const CORES: usize = 2;
/// Messages per sender: few enough that every entry fits the rings.
const PER: usize = 300;
const RING: usize = 1 << 14;

static TRACER: Tracer<RING> = Tracer::new();

#[test]
fn a_traced_run_records_every_entry_in_order_and_replays() {
    let mut k = Box::new(Kernel::new(
        BigLock::new(ClhLock::<CORES, HostRelax>::new()),
        FakeHal::new(CORES),
        CORES,
    ));
    k.set_tracer(&TRACER);
    let programs = Programs::new();
    let w = workload::ipc(&mut k, &programs, PER, false, 7);
    let cfg = RunConfig {
        timeout: Duration::from_secs(60),
        ..RunConfig::default()
    };
    let stats = run(&k, &programs, cfg, || w.ledger.complete()).expect("run");
    w.verify().expect("every message delivered");

    let mut records: Vec<Record> = Vec::new();
    let mut syscalls = 0u64;
    for cpu in 0..CORES {
        let mut out = vec![Record::EMPTY; RING];
        let snap = TRACER.ring(cpu).snapshot(&mut out);
        assert_eq!(snap.lost, 0, "cpu {cpu}: the ring overflowed; lower PER");
        let mine = &out[..snap.copied];
        for (i, r) in mine.iter().enumerate() {
            r.validate()
                .unwrap_or_else(|e| panic!("cpu {cpu} record {i}: {e}: {r:?}"));
            assert_eq!(usize::from(r.core), cpu, "record {i} on the wrong ring");
            assert_eq!(
                (r.rtm_outcome, r.rtm_retries, r.rtm_abort_cause),
                (sim::trace::RtmOutcome::NotUsed, 0, 0),
                "a big-lock kernel's record {i} names an RTM outcome"
            );
            assert!(
                r.in_kernel >= 1 && usize::from(r.in_kernel) <= CORES,
                "cores in the kernel: {}",
                r.in_kernel
            );
            if r.kind == EntryKind::Syscall {
                syscalls += 1;
                assert!(
                    (1..=kernel::syscall::nr::MAX).contains(&usize::from(r.number)),
                    "syscall number {} of record {i}",
                    r.number
                );
            }
            if let Some(next) = mine.get(i + 1) {
                assert!(
                    r.exit_at() <= next.entry,
                    "cpu {cpu}: entries {i} and {} overlap",
                    i + 1
                );
            }
        }
        records.extend_from_slice(mine);
    }
    assert_eq!(
        records.len() as u64,
        stats.entries,
        "one record per kernel entry"
    );
    assert_eq!(
        syscalls,
        stats.total_syscalls(),
        "one syscall record per system call"
    );

    // Through the file format, the analysis and a replay on the recorded cores.
    let trace = Trace {
        cores: CORES as u16,
        strategy: TraceStrategy::BigLock,
        frequency_hz: tests::bench::tsc_hz(Duration::from_millis(20)),
        records,
    };
    let back = Trace::from_bytes(&trace.to_bytes()).expect("the trace file reads back");
    assert_eq!(back, trace);
    let report = sim::analysis::analyse(&trace);
    assert_eq!(report.total.entries, stats.entries);
    assert_eq!(report.total.syscalls, stats.total_syscalls());
    assert_eq!(
        report.per_call.iter().map(|c| c.count).sum::<u64>(),
        stats.entries,
        "every entry is in one per-call row"
    );
    assert!(report.total.lock_held_cycles > 0 && report.total.kernel_fraction > 0.0);
    let sim = sim::simulate::simulate(&trace, &Config::new(CORES, LockStrategy::BigLock))
        .expect("replay");
    assert_eq!(sim.entries, trace.records.len() as u64);
    // The replay keeps every entry's own times and recomputes only the waits: it cannot be
    // shorter than the busiest core's kernel time.
    let busiest: u64 = (0..CORES as u16)
        .map(|c| {
            trace
                .core_records(c)
                .iter()
                .map(|r| u64::from(r.exit - r.lock_wait()))
                .sum::<u64>()
        })
        .max()
        .unwrap();
    assert!(
        sim.run_cycles >= busiest,
        "replay {} cycles, busiest core's kernel time {busiest}",
        sim.run_cycles
    );
}

/// The memory benchmark's workload traced (`tests::tracing::record_memory`): every page a
/// task touches is one fault entry and every page is freed through the pager, so the trace
/// holds exactly the workload's faults, and the recording refuses what it cannot stand for.
#[test]
fn the_pager_workload_records_one_fault_per_touched_page() {
    use sim::trace::EntryKind as Kind;
    use tests::tracing::{record_memory, KernelLock, MemoryRecording};
    const PAGES: usize = 8;
    const TASKS: usize = 2;
    for (cores, global) in [(1, false), (2, false), (2, true)] {
        let what = MemoryRecording {
            cores,
            lock: KernelLock::Clh,
            pages: PAGES,
            global,
            tasks: TASKS,
            frequency_hz: 1_000_000_000,
        };
        let t = record_memory(&what).unwrap();
        assert_eq!(usize::from(t.cores), cores);
        assert_eq!(t.strategy, TraceStrategy::BigLock);
        // One untimed warm-up task, then TASKS timed ones, on every core.
        let faults = t.records.iter().filter(|r| r.kind == Kind::Fault).count();
        assert_eq!(faults, cores * PAGES * (TASKS + 1), "{what:?}");
        for core in 0..cores as u16 {
            assert!(
                t.records
                    .iter()
                    .any(|r| r.core == core && r.kind == Kind::Fault),
                "core {core} recorded no fault ({what:?})"
            );
        }
        // Each fault is followed by the pager's mapping call and reply, each free by a
        // request, an unmapping call and a reply: about six entries per page.
        assert!(t.records.len() >= 6 * faults, "{} entries", t.records.len());
    }
    let refused = |lock, cores| {
        record_memory(&MemoryRecording {
            cores,
            lock,
            pages: PAGES,
            global: false,
            tasks: TASKS,
            frequency_hz: 1_000_000_000,
        })
        .unwrap_err()
    };
    assert!(refused(KernelLock::Fine, 2).contains("fine"));
    assert!(refused(KernelLock::None, 2).contains("1 core"));
}

/// The fine-grained kernel's object locks in the trace: every IPC system call records the
/// locks it took (each distinct object once, first acquisition, inside the read side), the
/// same call takes the same kinds of lock each time, and a replay under per-object locks runs.
#[test]
fn fine_grained_entries_record_their_object_locks() {
    use tests::tracing::{record, KernelLock, Recording};
    let t = record(&Recording {
        cores: 2,
        lock: KernelLock::Fine,
        per: 200,
        alternate: false,
        frequency_hz: 1_000_000_000,
    })
    .expect("fine-grained recording");
    assert_eq!(t.strategy, TraceStrategy::FineGrained);
    let ipc = [kernel::syscall::nr::CALL, kernel::syscall::nr::REPLY_RECV];
    let mut with_objects = 0;
    let mut with_tcbs = 0;
    for (i, r) in t.records.iter().enumerate() {
        r.validate()
            .unwrap_or_else(|e| panic!("record {i}: {e}: {r:?}"));
        let ids: Vec<u32> = r.object_locks().iter().map(|o| o.id).collect();
        let mut distinct = ids.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(
            distinct.len(),
            ids.len(),
            "record {i} names an object twice"
        );
        if r.kind == EntryKind::Syscall && ipc.contains(&usize::from(r.number)) {
            // An endpoint (rank 1) always; TCBs (4) and a run queue (5) only on the full path
            // (the fastpath takes the endpoint's lock alone).
            let kinds: Vec<u32> = ids.iter().map(|id| id >> 28).collect();
            assert!(
                kinds.contains(&1),
                "record {i}: lock kinds {kinds:?} lack an endpoint"
            );
            if kinds.contains(&4) {
                with_tcbs += 1;
            } else {
                assert_eq!(kinds, [1], "record {i}: a fastpath record locks more");
            }
            with_objects += 1;
        }
    }
    assert!(with_objects >= 400, "{with_objects} IPC records");
    // Some take the full path (a call that finds no receiver waiting, say), which locks TCBs.
    assert!(with_tcbs > 0, "no IPC record took a TCB lock");
    let sim = sim::simulate::simulate(&t, &Config::new(2, LockStrategy::FineGrained))
        .expect("replay under per-object locks");
    assert_eq!(sim.entries, t.records.len() as u64);
}

static BUSY_TRACER: Tracer<256> = Tracer::new();

/// The benchmark calls on the host's TSC with a tracer: `KernelBusy` holds the big lock for at
/// least the ticks asked (what the trace-replay simulator is validated with), and
/// `KernelCounters` reads the entries since its zero and their traced cycles.
#[test]
fn kernel_busy_holds_the_lock_for_the_ticks_asked_and_the_counters_see_it() {
    use kernel::syscall::{counters, nr, result};
    use kernel::Syscall;
    const TICKS: usize = 100_000;
    let mut k = Box::new(Kernel::new(
        BigLock::new(ClhLock::<1, HostRelax>::new()),
        FakeHal::new(1),
        1,
    ));
    k.set_tracer(&BUSY_TRACER);
    let t = k.create_thread(10, 0, None).unwrap();
    k.start(t).unwrap();
    assert_eq!(k.timer_tick(0).thread, Some(t));
    let sys = |sc: Syscall| {
        let e = k.syscall(0, sc.encode());
        assert_eq!(e.thread, Some(t));
        result(&e.regs).expect("call failed")
    };
    assert_eq!(sys(Syscall::Null), (0, [0; 4]));
    sys(Syscall::KernelCounters {
        op: counters::ZERO,
        core: 0,
    });
    let (spun, _) = sys(Syscall::KernelBusy { cycles: TICKS });
    assert!(spun >= TICKS, "spun {spun} of {TICKS} ticks");
    let (entries, [cycles, all, _, _]) = sys(Syscall::KernelCounters {
        op: counters::READ,
        core: 0,
    });
    // The busy call and this read; the read's own cycles are added at its exit.
    assert_eq!((entries, all), (2, 2));
    assert!(cycles >= TICKS, "{cycles} ticks in the kernel");

    let mut out = vec![Record::EMPTY; 256];
    let snap = BUSY_TRACER.ring(0).snapshot(&mut out);
    let busy: Vec<&Record> = out[..snap.copied]
        .iter()
        .filter(|r| usize::from(r.number) == nr::KERNEL_BUSY)
        .collect();
    assert_eq!(busy.len(), 1);
    let held = busy[0].lock_released - busy[0].lock_acquired;
    assert!(held as usize >= TICKS, "lock held {held} ticks");
}

static RTM_TRACER: Tracer<64> = Tracer::new();
static RTM_FALLBACK_TRACER: Tracer<64> = Tracer::new();

/// The RTM outcome in the trace, with scripted transactions: a section that commits after one
/// conflict records `Committed`, 1 retry and the conflict bit; later ones commit at once; an
/// engine whose transactions always abort records `FellBack` with the attempts it made.
#[test]
fn rtm_entries_record_their_outcome_retries_and_causes() {
    use kernel::trace::Record;
    use kernel::{Rtm, Syscall};
    use kernel_locks::rtm::testing::{ScriptedEngine, Step, CONFLICT};
    use kernel_locks::{RtmLock, TicketLock};
    use sim::trace::RtmOutcome;
    fn records(tracer: &Tracer<64>) -> Vec<Record> {
        let mut out = vec![Record::EMPTY; 64];
        let n = tracer.ring(0).snapshot(&mut out).copied;
        out.truncate(n);
        out
    }
    static SCRIPT: [Step; 2] = [Err(CONFLICT), Ok(())];
    // SAFETY: one host thread makes every entry, one at a time: the scripted "transactions"
    // never run concurrently.
    let engine = unsafe { ScriptedEngine::new(&SCRIPT, Ok(())) };
    let lock: RtmLock<_, { kernel::config::MAX_CPUS }, HostRelax, _> =
        RtmLock::with_engine(TicketLock::<HostRelax>::with_relax(), engine);
    let mut k = Box::new(Kernel::new(Rtm::from_lock(lock), FakeHal::new(1), 1));
    k.set_tracer(&RTM_TRACER);
    for _ in 0..3 {
        k.syscall(0, Syscall::Null.encode());
    }
    let r = records(&RTM_TRACER);
    let got: Vec<_> = r
        .iter()
        .map(|r| (r.rtm_outcome, r.rtm_retries, r.rtm_abort_cause))
        .collect();
    assert_eq!(
        got,
        [
            (RtmOutcome::Committed, 1, 0b100),
            (RtmOutcome::Committed, 0, 0),
            (RtmOutcome::Committed, 0, 0)
        ]
    );

    static NONE: [Step; 0] = [];
    let lock: RtmLock<_, { kernel::config::MAX_CPUS }, HostRelax, _> = RtmLock::with_engine(
        TicketLock::<HostRelax>::with_relax(),
        ScriptedEngine::aborting(&NONE, CONFLICT),
    );
    let attempts = lock.policy().max_attempts;
    let mut k = Box::new(Kernel::new(Rtm::from_lock(lock), FakeHal::new(1), 1));
    k.set_tracer(&RTM_FALLBACK_TRACER);
    k.syscall(0, Syscall::Null.encode());
    let r = records(&RTM_FALLBACK_TRACER);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].rtm_outcome, RtmOutcome::FellBack);
    assert_eq!(
        u32::from(r[0].rtm_retries),
        attempts,
        "every attempt aborted"
    );
    assert_eq!(r[0].rtm_abort_cause, 0b100);
}

/// The client-server workload traced (`tests::tracing::record_client_server`): a client on
/// each of 2 cores Calls one server on core 0. One record per entry, every client's Calls and
/// the server's ReplyRecvs in it, every record valid, and a replay on the recorded cores runs;
/// under the fine-grained kernel the shared endpoint's lock is in records of both cores (the
/// object the simulator's per-object locks make the cores contend for). `none` is refused.
#[test]
fn the_client_server_workload_records_every_call_and_shares_the_endpoint() {
    use kernel::syscall::nr;
    use std::collections::BTreeSet;
    use tests::tracing::{record_client_server, KernelLock, Recording};
    const PER: usize = 300;
    let what = |lock| Recording {
        cores: CORES,
        lock,
        per: PER,
        alternate: false,
        frequency_hz: 1_000_000_000,
    };
    for lock in [KernelLock::Clh, KernelLock::Fine] {
        let t = record_client_server(&what(lock)).unwrap_or_else(|e| panic!("{lock:?}: {e}"));
        assert_eq!(usize::from(t.cores), CORES);
        let calls_on = |core: u16| {
            t.records
                .iter()
                .filter(|r| {
                    r.core == core
                        && r.kind == EntryKind::Syscall
                        && usize::from(r.number) == nr::CALL
                })
                .count()
        };
        // Each client's Calls on its own core (none is interrupted: nothing migrates).
        for core in 0..CORES as u16 {
            assert_eq!(calls_on(core), PER, "{lock:?}: Calls on core {core}");
        }
        // The server on core 0 replies to every Call: one ReplyRecv per message and its first.
        let reply_recvs = t
            .records
            .iter()
            .filter(|r| r.kind == EntryKind::Syscall && usize::from(r.number) == nr::REPLY_RECV)
            .inspect(|r| assert_eq!(r.core, 0, "{lock:?}: a ReplyRecv off the server's core"))
            .count();
        assert_eq!(reply_recvs, CORES * PER + 1, "{lock:?}: ReplyRecvs");
        for (i, r) in t.records.iter().enumerate() {
            r.validate()
                .unwrap_or_else(|e| panic!("{lock:?} record {i}: {e}: {r:?}"));
        }
        let strategy = match lock {
            KernelLock::Fine => {
                assert_eq!(t.strategy, TraceStrategy::FineGrained);
                // The endpoint (lock kind 1; there is one) in records of both cores.
                let endpoint_on: BTreeSet<u16> = t
                    .records
                    .iter()
                    .filter(|r| r.object_locks().iter().any(|o| o.id >> 28 == 1))
                    .map(|r| r.core)
                    .collect();
                assert_eq!(
                    endpoint_on,
                    (0..CORES as u16).collect(),
                    "cores whose records name the endpoint"
                );
                let endpoints: BTreeSet<u32> = t
                    .records
                    .iter()
                    .flat_map(|r| r.object_locks().iter().map(|o| o.id))
                    .filter(|id| id >> 28 == 1)
                    .collect();
                assert_eq!(endpoints.len(), 1, "one shared endpoint: {endpoints:x?}");
                // The server's TCB (kind 4) too: some TCB is locked from both cores.
                let tcbs_on = |core: u16| -> BTreeSet<u32> {
                    t.records
                        .iter()
                        .filter(|r| r.core == core)
                        .flat_map(|r| r.object_locks().iter().map(|o| o.id))
                        .filter(|id| id >> 28 == 4)
                        .collect()
                };
                assert!(
                    tcbs_on(0).intersection(&tcbs_on(1)).next().is_some(),
                    "no TCB locked from both cores"
                );
                LockStrategy::FineGrained
            }
            _ => {
                assert_eq!(t.strategy, TraceStrategy::BigLock);
                LockStrategy::BigLock
            }
        };
        let sim = sim::simulate::simulate(&t, &Config::new(CORES, strategy))
            .unwrap_or_else(|e| panic!("{lock:?}: replay: {e:?}"));
        assert_eq!(sim.entries, t.records.len() as u64);
        assert!(sim.run_cycles > 0);
    }
    let e = record_client_server(&what(KernelLock::None)).unwrap_err();
    assert!(e.contains("none"), "{e}");
}
