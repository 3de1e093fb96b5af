//! Adversarial system calls: many threads on several cores issue random and malformed calls
//! (bad slots, wrong types, missing rights, garbage registers, huge values, unaligned or
//! out-of-range addresses) while they also delete, suspend, move and create threads, map and
//! unmap pages and bind IRQs. The kernel must answer with errors, never panic, never deadlock,
//! and keep every invariant. At least 10^5 calls per strategy run.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use kernel::config::MAX_CPUS;
use kernel::{BigLock, Error, FineGrained, Kernel, Rtm, Strategy};
use kernel_locks::rtm::testing::{ScriptedEngine, CONFLICT};
use kernel_locks::{ClhLock, RtmLock, TicketLock};
use tests::{run, workload, FakeHal, HostRelax, Programs, RunConfig};

const CORES: usize = 3;
const ADVERSARIES: usize = 12;
const CALLS_EACH: u64 = 9_000;

fn adversarial<S: Strategy>(name: &str, strategy: S, seed: u64) {
    let mut k = Box::new(Kernel::new(strategy, FakeHal::new(CORES), CORES));
    let programs = Programs::new();
    let out = workload::adversarial(&mut k, &programs, ADVERSARIES, CALLS_EACH, seed);
    let cfg = RunConfig {
        irq_every: 97,
        irq: 1,
        timeout: Duration::from_secs(90),
        ..RunConfig::default()
    };
    let stats = match run(&k, &programs, cfg, || true) {
        Ok(s) => s,
        Err(e) => {
            // Where every thread is, to tell a hang from a slow run.
            for t in kernel::ThreadId::all() {
                let (life, state) = k.thread_state(t);
                if life != kernel::Life::Free {
                    eprintln!("{name}: thread {} {life:?} {state:?}", t.index());
                }
            }
            panic!("{name}: {e}")
        }
    };
    let sum = k
        .check_invariants()
        .unwrap_or_else(|v| panic!("{name}: {v:?}"));
    let calls = out.calls.load(Relaxed);
    assert!(calls >= 100_000, "{name}: only {calls} adversarial calls");
    let codes: Vec<(usize, u64)> = out
        .codes
        .iter()
        .enumerate()
        .map(|(c, n)| (c, n.load(Relaxed)))
        .filter(|&(_, n)| n > 0)
        .collect();
    for &(code, _) in &codes {
        assert!(
            code == 0 || Error::from_code(code).is_some(),
            "{name}: unknown result code {code}"
        );
    }
    let errors: u64 = codes.iter().filter(|c| c.0 != 0).map(|c| c.1).sum();
    assert!(
        codes.iter().any(|c| c.0 == 0),
        "{name}: some calls must succeed"
    );
    for e in [
        Error::InvalidCap,
        Error::WrongType,
        Error::MissingRight,
        Error::OutOfRange,
        Error::UnknownSyscall,
    ] {
        assert!(
            codes.iter().any(|c| c.0 == e.code()),
            "{name}: never saw {e:?}"
        );
    }
    let secs = stats.elapsed.as_secs_f64();
    eprintln!(
        "{name}: {calls} adversarial calls ({errors} errors) in {:?} = {:.0} calls/s, {} entries, {} IPIs; codes {codes:?}; {sum:?}",
        stats.elapsed,
        calls as f64 / secs,
        stats.entries,
        stats.ipis
    );
}

#[test]
fn adversarial_big_lock_ticket() {
    adversarial(
        "bkl-ticket",
        BigLock::new(TicketLock::<HostRelax>::with_relax_and_cpus(MAX_CPUS)),
        21,
    );
}

#[test]
fn adversarial_big_lock_clh() {
    adversarial(
        "bkl-clh",
        BigLock::new(ClhLock::<MAX_CPUS, HostRelax>::new()),
        22,
    );
}

#[test]
fn adversarial_fine_grained() {
    adversarial("fine", FineGrained::<HostRelax>::new(), 23);
    // The checker saw the protocol's orders (and would have panicked at an inversion).
    #[cfg(feature = "lockdep")]
    tests::lockdep::report(
        "fine",
        &[
            ("fine.big", "fine.endpoint"),
            ("fine.big", "fine.notification"),
            ("fine.big", "fine.irq"),
            ("fine.endpoint", "fine.tcb"),
            ("fine.notification", "fine.tcb"),
            ("fine.tcb", "fine.run-queue"),
        ],
    );
}

#[test]
fn adversarial_rtm_with_aborts() {
    static SCRIPT: [kernel_locks::rtm::testing::Step; 2] = [Err(CONFLICT), Err(CONFLICT)];
    let lock: RtmLock<_, MAX_CPUS, HostRelax, _> = RtmLock::with_engine(
        TicketLock::<HostRelax>::with_relax(),
        ScriptedEngine::aborting(&SCRIPT, CONFLICT),
    );
    adversarial("rtm-aborts", Rtm::from_lock(lock), 24);
}
