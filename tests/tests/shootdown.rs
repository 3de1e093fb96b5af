//! TLB shoot-down with acknowledgement and address-space deletion, on host threads through the
//! hosted harness, for the big lock, the fine-grained strategy and RTM (not `NoLock`: these are
//! management calls while other cores run).
//!
//! * An `UnmapPage` of a page of an address space another core runs returns only after that
//!   core flushed its TLB: the program checks, in [`FakeHal::order`], that the remote flush
//!   comes after the page-table store, before its next step (the call's return).
//! * Two cores that shoot down each other at the same time (each unmaps in the other's address
//!   space, many rounds) both finish: a core waiting for acknowledgements services its own.
//! * Address spaces are deleted and re-created while a thread of theirs runs on another core.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kernel::config::MAX_CPUS;
use kernel::{
    BigLock, CapSlot, CpuId, FineGrained, Kernel, ObjRef, Regs, Rights, Rtm, Strategy, Syscall,
};
use kernel_locks::TicketLock;
use tests::{run, FakeHal, HalEvent, HostRelax, Programs, RunConfig};

type Order = Arc<Mutex<Vec<(CpuId, HalEvent)>>>;

fn s(i: usize) -> CapSlot {
    CapSlot::new(i).unwrap()
}

fn cfg() -> RunConfig {
    RunConfig {
        timeout: Duration::from_secs(60),
        ..RunConfig::default()
    }
}

/// Aborts the test process if a run deadlocks (a deadlocked core never returns, so `run`
/// could not time out).
fn watchdog(name: &'static str, done: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        for _ in 0..1200 {
            if done.load(Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("{name}: deadlock (no progress in 120 s)");
        std::process::abort();
    });
}

/// Whether core `cpu` loaded `root` (recorded in the order log).
fn loaded(order: &Order, cpu: CpuId, root: u64) -> bool {
    order
        .lock()
        .unwrap()
        .iter()
        .any(|&(c, e)| c == cpu && e == HalEvent::Switch(root))
}

/// Whether, after the last `Unmap(root, vaddr)`, core `remote` flushed its TLB.
fn flushed_after_unmap(order: &Order, remote: CpuId, root: u64, vaddr: usize) -> bool {
    let log = order.lock().unwrap();
    let Some(i) = log
        .iter()
        .rposition(|&(_, e)| e == HalEvent::Unmap(root, vaddr))
    else {
        return false;
    };
    log[i..]
        .iter()
        .any(|&(c, e)| c == remote && matches!(e, HalEvent::Flush(_, None)))
}

/// A program that maps and unmaps a frame `rounds` times in the address space of slot 0 (frame
/// in slot 1), once `remote` loaded `root`, checking after each unmap that `remote` flushed.
fn map_unmap(
    order: Order,
    remote: CpuId,
    root: u64,
    vaddr: usize,
    rounds: usize,
    violations: Arc<AtomicU64>,
    done: Arc<AtomicU64>,
) -> impl FnMut(&Regs) -> Option<Regs> + Send {
    let mut step = 0usize;
    move |ret: &Regs| {
        if step == 0 && !loaded(&order, remote, root) {
            return Some(Syscall::Yield.encode());
        }
        // Odd steps follow a MapPage, even steps (from 2) follow an UnmapPage.
        if step > 0 {
            assert_eq!(ret[0], 0, "call failed: {ret:?}");
        }
        if step > 0 && step % 2 == 0 && !flushed_after_unmap(&order, remote, root, vaddr) {
            violations.fetch_add(1, Relaxed);
        }
        if step == 2 * rounds {
            done.fetch_add(1, Release);
            return None;
        }
        step += 1;
        Some(if step % 2 == 1 {
            Syscall::MapPage {
                aspace: s(0),
                mem: s(1),
                vaddr,
                attrs: kernel::PageAttrs::empty(),
                offset: 0,
            }
            .encode()
        } else {
            Syscall::UnmapPage {
                aspace: s(0),
                vaddr,
            }
            .encode()
        })
    }
}

/// Each of `pairs` cores `c` runs a thread in its own address space and maps/unmaps in the
/// address space of core `(c + 1) % cores`: every unmap shoots down a core that shoots down
/// another one at the same time (with 2 cores: each other).
fn mutual<S: Strategy>(name: &'static str, strategy: S, cores: usize, rounds: usize) {
    let mut k = Box::new(Kernel::new(strategy, FakeHal::new(cores), cores));
    let order = k.hal().order();
    let programs = Programs::new();
    let violations = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let roots: Vec<u64> = (0..cores).map(|c| 0xA0_0000 + 0x1000 * c as u64).collect();
    let spaces: Vec<_> = roots
        .iter()
        .map(|&r| k.create_address_space(r).unwrap())
        .collect();
    let frame = k.create_memory(0x5000, 1, kernel::MemKind::Ram).unwrap();
    for c in 0..cores {
        let t = k.create_thread(10, c, Some(spaces[c])).unwrap();
        let other = (c + 1) % cores;
        k.install_cap(
            t,
            s(0),
            ObjRef::AddressSpace(spaces[other]),
            Rights::WRITE,
            0,
        )
        .unwrap();
        k.install_cap(t, s(1), ObjRef::Memory(frame), Rights::READ, 0)
            .unwrap();
        k.start(t).unwrap();
        programs.set(
            t,
            true,
            map_unmap(
                order.clone(),
                other,
                roots[other],
                0x4000 + 0x1000 * c,
                rounds,
                violations.clone(),
                done.clone(),
            ),
        );
    }
    let finished = Arc::new(AtomicBool::new(false));
    watchdog(name, finished.clone());
    let stats = run(&k, &programs, cfg(), || true).unwrap_or_else(|e| panic!("{name}: {e}"));
    finished.store(true, Relaxed);
    assert_eq!(done.load(Acquire), cores as u64);
    assert_eq!(
        violations.load(Relaxed),
        0,
        "{name}: an UnmapPage returned before the remote core flushed"
    );
    k.check_invariants()
        .unwrap_or_else(|v| panic!("{name}: {v:?}"));
    eprintln!(
        "{name}: {cores} cores x {rounds} map/unmap rounds, {} IPIs, {:?}",
        stats.ipis, stats.elapsed
    );
}

#[test]
fn unmap_returns_after_remote_flush_big_lock() {
    mutual(
        "bkl-ticket",
        BigLock::new(TicketLock::<HostRelax>::with_relax_and_cpus(MAX_CPUS)),
        2,
        300,
    );
}

#[test]
fn mutual_shootdown_fine_grained() {
    mutual("fine", FineGrained::<HostRelax>::new(), 2, 300);
    mutual("fine-3", FineGrained::<HostRelax>::new(), 3, 200);
}

#[test]
fn mutual_shootdown_rtm() {
    mutual(
        "rtm-ticket",
        Rtm::<_, kernel_locks::Rtm, HostRelax>::new(TicketLock::<HostRelax>::with_relax()),
        2,
        300,
    );
}

/// The root task on core 0 repeatedly creates a thread in address space V on core 1, lets it
/// run, maps and unmaps a page of V, deletes the thread (a zombie core 1 may still run) and V
/// (which waits for core 1's flush, checked in the order log), and re-creates V in the same
/// capability slot (retrying while the slot is not reusable yet).
fn delete_recreate<S: Strategy>(name: &'static str, strategy: S, rounds: usize) {
    let cores = 2;
    let mut k = Box::new(Kernel::new(strategy, FakeHal::new(cores), cores));
    let order = k.hal().order();
    let programs = Programs::new();
    let ra = k.create_address_space(0xC0_0000).unwrap();
    let v = k.create_address_space(0xB0_0000).unwrap();
    let frame = k.create_memory(0x5000, 1, kernel::MemKind::Ram).unwrap();
    let root = k.create_thread(10, 0, Some(ra)).unwrap();
    k.install_cap(root, s(0), ObjRef::AddressSpace(v), Rights::ALL, 0)
        .unwrap();
    k.install_cap(root, s(1), ObjRef::Memory(frame), Rights::READ, 0)
        .unwrap();
    k.install_cap(root, s(3), ObjRef::Control, Rights::MANAGE, 0)
        .unwrap();
    k.start(root).unwrap();
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let (fails, log) = (failures.clone(), order.clone());
    let mut round = 0;
    let mut step = 0;
    let mut last: Option<Syscall> = None;
    let mut mark = 0;
    programs.set(root, true, move |ret: &Regs| {
        let check = |what: &str, ok: bool| {
            if !ok {
                fails.lock().unwrap().push(format!("round {round}: {what}"));
            }
        };
        if let Some(prev) = last {
            let code = ret[0];
            match prev {
                Syscall::CreateAddressSpace { .. } if code != 0 => {
                    // Not reusable yet (a core still runs a zombie of it): retry.
                    last = Some(prev);
                    return Some(prev.encode());
                }
                Syscall::DeleteAddressSpace { .. } => {
                    check("DeleteAddressSpace failed", code == 0);
                    let l = log.lock().unwrap();
                    // The log as it was when the deletion was issued.
                    let rel = Some(mark);
                    let ran = l
                        .iter()
                        .any(|&(c, e)| c == 1 && e == HalEvent::Switch(0xB0_0000));
                    let flushed = rel.is_some_and(|i| {
                        l[i..]
                            .iter()
                            .any(|&(c, e)| c == 1 && matches!(e, HalEvent::Flush(_, None)))
                    });
                    check(
                        "core 1 did not flush before the deletion returned",
                        !ran || flushed,
                    );
                }
                Syscall::Yield => {}
                _ => check(&format!("{prev:?} failed: {ret:?}"), code == 0),
            }
        }
        if round == rounds {
            return None;
        }
        // In the first round, wait until core 1 ran the thread (loaded V); afterwards core 1
        // keeps V loaded while idle, so later rounds shoot it down whether it ran or not.
        if round == 0 && step == 5 && !loaded(&log, 1, 0xB0_0000) {
            last = Some(Syscall::Yield);
            return Some(Syscall::Yield.encode());
        }
        let next = match step {
            0 => Syscall::CreateThread {
                control: s(3),
                dest: s(2),
                aspace: s(0),
                priority: 10,
                core: 1,
            },
            // A created thread has no registers until WriteRegisters gives it some.
            1 => Syscall::WriteRegisters {
                thread: s(2),
                pc: 0x1000,
                sp: 0x2000,
                arg: 0,
            },
            2 => Syscall::Resume { thread: s(2) },
            3 | 4 => Syscall::Yield,
            5 => Syscall::MapPage {
                aspace: s(0),
                mem: s(1),
                vaddr: 0x4000,
                attrs: kernel::PageAttrs::empty(),
                offset: 0,
            },
            6 => Syscall::Yield,
            7 => Syscall::UnmapPage {
                aspace: s(0),
                vaddr: 0x4000,
            },
            8 => Syscall::DeleteThread { thread: s(2) },
            9 => Syscall::DeleteAddressSpace { aspace: s(0) },
            _ => Syscall::CreateAddressSpace {
                control: s(3),
                dest: s(0),
            },
        };
        if matches!(next, Syscall::DeleteAddressSpace { .. }) {
            mark = log.lock().unwrap().len();
        }
        step += 1;
        if step == 11 {
            step = 0;
            round += 1;
        }
        last = Some(next);
        Some(next.encode())
    });
    let finished = Arc::new(AtomicBool::new(false));
    watchdog(name, finished.clone());
    let stats = run(&k, &programs, cfg(), || true).unwrap_or_else(|e| panic!("{name}: {e}"));
    finished.store(true, Relaxed);
    let f = failures.lock().unwrap();
    assert!(f.is_empty(), "{name}: {:?}", &f[..f.len().min(5)]);
    assert!(
        loaded(&order, 1, 0xB0_0000),
        "{name}: core 1 never ran the address space"
    );
    k.check_invariants()
        .unwrap_or_else(|v| panic!("{name}: {v:?}"));
    eprintln!(
        "{name}: {rounds} delete/re-create rounds, {} IPIs, {:?}",
        stats.ipis, stats.elapsed
    );
}

#[test]
fn address_space_delete_recreate_big_lock() {
    delete_recreate(
        "bkl-ticket",
        BigLock::new(TicketLock::<HostRelax>::with_relax_and_cpus(MAX_CPUS)),
        100,
    );
}

#[test]
fn address_space_delete_recreate_fine_grained() {
    delete_recreate("fine", FineGrained::<HostRelax>::new(), 100);
}
