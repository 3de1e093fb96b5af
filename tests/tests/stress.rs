//! Randomised multi-core IPC stress through the hosted harness, for every locking strategy.
//! After each run: every message and reply delivered exactly once, every kernel invariant
//! (no thread lost or duplicated in run queues, queue links, reference counts) holds.

use std::time::Duration;

use kernel::config::MAX_CPUS;
use kernel::{BigLock, FineGrained, Kernel, NoLock, Rtm, Strategy};
use kernel_locks::rtm::testing::{
    model_lock, HtmModel, ScriptedEngine, CAPACITY, CONFLICT, RETRY, UNNAMED,
};
use kernel_locks::{ClhLock, RtmLock, RtmPolicy, TicketLock};
use tests::{run, workload, FakeHal, HostRelax, Programs, RunConfig};

const CORES: usize = 3;
const PER: usize = 2000;

fn stress<S: Strategy>(name: &str, strategy: &S, cores: usize, shared: bool, seeds: &[u64]) {
    for &seed in seeds {
        let mut k = Box::new(Kernel::new(
            strategy_ref(strategy),
            FakeHal::new(cores),
            cores,
        ));
        let programs = Programs::new();
        let w = workload::ipc(&mut k, &programs, PER, shared, seed);
        let cfg = RunConfig {
            timeout: Duration::from_secs(60),
            ..RunConfig::default()
        };
        let stats = run(&k, &programs, cfg, || w.ledger.complete())
            .unwrap_or_else(|e| panic!("{name} seed {seed}: {e}"));
        w.verify()
            .unwrap_or_else(|e| panic!("{name} seed {seed}: {e}"));
        let sum = k
            .check_invariants()
            .unwrap_or_else(|v| panic!("{name} seed {seed}: {v:?}"));
        if shared {
            assert!(stats.ipis > 0, "{name}: cross-core wake-ups must send IPIs");
        }
        eprintln!(
            "{name} seed {seed}: {} syscalls ({:?} per core), {} entries, {} IPIs, {} messages, {:?}; {sum:?}",
            stats.total_syscalls(),
            stats.syscalls,
            stats.entries,
            stats.ipis,
            w.ledger.received(),
            stats.elapsed
        );
    }
}

/// The strategy is shared by reference, so one strategy value serves several kernels.
fn strategy_ref<S: Strategy>(s: &S) -> ByRef<'_, S> {
    ByRef(s)
}

struct ByRef<'a, S>(&'a S);

// SAFETY: forwards every operation to the referenced strategy, which provides the guarantees.
unsafe impl<S: Strategy> Strategy for ByRef<'_, S> {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn enter(&self, cpu: usize, side: kernel::strategy::Side) -> bool {
        self.0.enter(cpu, side)
    }
    unsafe fn exit(&self, cpu: usize, side: kernel::strategy::Side) {
        // SAFETY: forwarded contract.
        unsafe { self.0.exit(cpu, side) }
    }
    unsafe fn exit_releasing(
        &self,
        cpu: usize,
        side: kernel::strategy::Side,
        held: kernel::strategy::LockId,
    ) {
        // SAFETY: forwarded contract.
        unsafe { self.0.exit_releasing(cpu, side, held) }
    }
    fn lock(&self, cpu: usize, id: kernel::strategy::LockId) {
        self.0.lock(cpu, id)
    }
    unsafe fn unlock(&self, cpu: usize, id: kernel::strategy::LockId) {
        // SAFETY: forwarded contract.
        unsafe { self.0.unlock(cpu, id) }
    }
    fn may_be_in_section(&self, cpu: usize) -> bool {
        self.0.may_be_in_section(cpu)
    }
    fn is_held(&self, id: kernel::strategy::LockId) -> bool {
        self.0.is_held(id)
    }
    fn serialises(&self) -> bool {
        self.0.serialises()
    }
}

#[test]
fn big_lock_ticket() {
    stress(
        "bkl-ticket",
        &BigLock::new(TicketLock::<HostRelax>::with_relax_and_cpus(MAX_CPUS)),
        CORES,
        true,
        &[1, 2],
    );
}

#[test]
fn big_lock_clh() {
    stress(
        "bkl-clh",
        &BigLock::new(ClhLock::<MAX_CPUS, HostRelax>::new()),
        CORES,
        true,
        &[3, 4],
    );
}

#[test]
fn fine_grained() {
    stress(
        "fine",
        &FineGrained::<HostRelax>::new(),
        CORES,
        true,
        &[5, 6, 7],
    );
    // The checker saw the protocol's orders (and would have panicked at an inversion).
    #[cfg(feature = "lockdep")]
    tests::lockdep::report(
        "fine",
        &[
            ("fine.big", "fine.endpoint"),
            ("fine.big", "fine.tcb"),
            ("fine.endpoint", "fine.tcb"),
            ("fine.tcb", "fine.run-queue"),
        ],
    );
}

#[test]
fn rtm_over_ticket() {
    // Real RTM if the CPU has it, else the fallback ticket lock.
    stress(
        "rtm-ticket",
        &Rtm::<_, kernel_locks::Rtm, HostRelax>::new(TicketLock::<HostRelax>::with_relax()),
        CORES,
        true,
        &[8],
    );
}

#[test]
fn rtm_with_scripted_aborts() {
    static SCRIPT: [kernel_locks::rtm::testing::Step; 5] = [
        Err(CONFLICT),
        Err(CAPACITY),
        Err(RETRY),
        Err(UNNAMED),
        Err(CONFLICT),
    ];
    let lock: RtmLock<_, MAX_CPUS, HostRelax, _> = RtmLock::with_engine(
        TicketLock::<HostRelax>::with_relax(),
        ScriptedEngine::aborting(&SCRIPT, CONFLICT),
    );
    let s = Rtm::from_lock(lock);
    stress("rtm-aborts", &s, CORES, true, &[9]);
    // Every acquisition aborted (or skipped) and fell back; none elided.
    let st = s.inner().stats();
    assert_eq!(st.direct, 0);
    assert!(
        st.fallback + st.skipped > 0 && st.aborts_conflict > 0,
        "{st:?}"
    );
}

#[test]
fn rtm_with_simulated_transactions() {
    static MODEL: HtmModel = HtmModel::new();
    let policy = RtmPolicy {
        max_attempts: 3,
        busy_skip: 1,
        abort_skip: 1,
    };
    let s = Rtm::from_lock(model_lock::<_, MAX_CPUS, HostRelax>(&MODEL, policy));
    stress("rtm-model", &s, CORES, true, &[10]);
    // Kernel sections really ran as (simulated) transactions, committed after the HAL work
    // was queued.
    let st = s.inner().stats();
    assert!(st.direct > 0, "{st:?}");
}

#[test]
fn no_lock_with_disjoint_objects() {
    // SAFETY: the non-shared workload gives each core its own threads and endpoints (one
    // private caller/server pair per core), and nothing else runs: no two cores ever touch the
    // same kernel object (the run-queue of a core, its threads and endpoint are private).
    let s = unsafe { NoLock::new() };
    stress("none", &s, CORES, false, &[11, 12]);
}
